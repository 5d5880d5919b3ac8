// Calls with side effects inside expressions run once each, in P4-16's evaluation
// order (8.x: operands and arguments left to right, the right operand of && / || only
// when the left does not decide, one branch of ?:): order.py makes each such call a
// statement of its own before lowering. inc and dbl both write their argument, so any
// other order, or a call run when it should not be, gives other bytes.
#include "include/data.p4"
struct metadata { }

bit<8> inc(inout bit<8> x) { x = x + 1; return x; }
bit<8> dbl(inout bit<8> x) { x = x + x; return x; }
bit<16> join(in bit<8> a, in bit<8> b) { return a ++ b; }

parser OrderParser(packet_in packet, out headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    // variables' initializers run once, in order, before `start` (calls in && and ?: too)
    bit<8> count = 1;
    bool first = count == 1 && inc(count) == 2;     // runs inc: count 2
    bool second = count == 1 && inc(count) == 3;    // count is 2: no inc
    bit<8> chosen = count == 2 ? dbl(count) : inc(count);     // dbl only: count 4
    state start {
        packet.extract(hdr.data);
        transition select(hdr.data.f1) { 6: keyed; 10: logic; 14: initialized; default: accept; }
    }
    state initialized {
        hdr.data.b1 = count;
        hdr.data.b2 = chosen;
        hdr.data.h2 = (first ? 16w0x10 : 16w0) | (second ? 16w1 : 16w0);
        transition accept;
    }
    state keyed {   // a call in a select key runs once, before the select reads it
        transition select(inc(hdr.data.b2)) { 0x10: bumped; default: accept; }
    }
    state bumped { hdr.data.h2 = 0xB0B0; transition accept; }
    state logic {   // && and ?: in a state: the later operand runs only when needed
        bool r = hdr.data.b2 == 1 && inc(hdr.data.b1) == 6;
        hdr.data.h2 = r ? 16w1 : 16w2;
        hdr.data.h1 = hdr.data.f2 == 0 ? (bit<16>)inc(hdr.data.b2) : (bit<16>)dbl(hdr.data.b2);
        transition accept;
    }
}

control OrderIngress(inout headers hdr, inout metadata meta,
                     inout standard_metadata_t standard_metadata) {
    table t {
        key = { hdr.data.f2: exact; }
        actions = { NoAction; }
        default_action = NoAction();
    }
    action both_write() { hdr.data.h1 = (bit<16>)(inc(hdr.data.b1) + dbl(hdr.data.b1)); }
    action logic() {
        bool r = hdr.data.b2 == 1 && inc(hdr.data.b1) == 6;
        bool s = hdr.data.b2 == 1 || dbl(hdr.data.b1) == 12;
        hdr.data.h2 = r ? 16w1 : 16w2;
        hdr.data.h1 = s ? 16w1 : 16w2;
    }
    action loops() {    // a run-time loop's condition is evaluated before each iteration
        for (bit<8> i = 0; inc(hdr.data.b1) < 5; i = i + 1) { hdr.data.h1 = hdr.data.h1 + 1; }
        for (bit<8> j = 0; j < 3 && inc(hdr.data.b2) < 5; j = j + 1) {
            hdr.data.h2 = hdr.data.h2 + 1;
        }
        // an initializer that is an assignment: its call runs once, before the loop
        for (hdr.data.b2 = inc(hdr.data.b1) + 1; hdr.data.b2 < 10; hdr.data.b2 = hdr.data.b2 + 2) {
            hdr.data.h1 = hdr.data.h1 + 1;
        }
    }
    action set_h1(bit<16> v) { hdr.data.h1 = v; }
    table keyed {   // a key with side effects: its call runs once, when the table is applied
        key = {
            inc(hdr.data.b1): exact @name("bumped");
            hdr.data.b1: exact @name("after");   // read by the table: after the call
        }
        actions = { set_h1; NoAction; }
        default_action = NoAction();
    }
    table keyed_and {   // && in a key: its right operand runs only when needed
        key = { hdr.data.b2 == 1 && inc(hdr.data.b1) == 6: exact @name("both"); }
        actions = { NoAction; }
        default_action = NoAction();
    }
    action pick() {     // a switch's value is evaluated once, before the labels' tests
        switch (dbl(hdr.data.b2)) {
            2: { hdr.data.h1 = 2; }
            4: { hdr.data.h1 = 4; }
            default: { hdr.data.h1 = 0xFF; }
        }
    }
    apply {
        if (hdr.data.f1 == 1) {
            hdr.data.b2 = inc(hdr.data.b1) + dbl(hdr.data.b1);
        } else if (hdr.data.f1 == 2) {
            both_write();
        } else if (hdr.data.f1 == 3) {
            bool r = hdr.data.b2 == 1 && inc(hdr.data.b1) == 6;
            bool s = hdr.data.b2 == 1 || dbl(hdr.data.b1) == 12;
            hdr.data.h2 = r ? 16w1 : 16w2;
            hdr.data.h1 = s ? 16w1 : 16w2;
        } else if (hdr.data.f1 == 4) {
            if (inc(hdr.data.b1) == dbl(hdr.data.b1)) {
                hdr.data.h2 = 0xAAAA;
            } else {
                hdr.data.h2 = 0x5555;
            }
        } else if (hdr.data.f1 == 5) {
            hdr.data.h1 = join(inc(hdr.data.b1), dbl(hdr.data.b1));
            hdr.data.h2 = (bit<16>)(hdr.data.f2 == 0 ? inc(hdr.data.b2) : dbl(hdr.data.b2));
        } else if (hdr.data.f1 == 7) {
            if (t.apply().hit && inc(hdr.data.b1) == 6) {
                hdr.data.h2 = 1;
            } else {
                hdr.data.h2 = 2;
            }
        } else if (hdr.data.f1 == 8) {
            logic();
        } else if (hdr.data.f1 == 9) {
            loops();
        } else if (hdr.data.f1 == 11) {
            switch (inc(hdr.data.b1)) {
                6: { hdr.data.h2 = 6; }
                7: { hdr.data.h2 = 7; }
                default: { hdr.data.h2 = 0xFF; }
            }
            pick();
        } else if (hdr.data.f1 == 12) {
            if (keyed.apply().hit) {
                hdr.data.h2 = 0x1111;
            }
        } else if (hdr.data.f1 == 13) {
            if (keyed_and.apply().hit) {
                hdr.data.h2 = 0x2222;
            }
        }
    }
}

V1Switch(OrderParser(), NoVerify(), OrderIngress(), NoEgress(), NoCompute(),
         DataDeparser()) main;
