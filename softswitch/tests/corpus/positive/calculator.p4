/* calculator.p4 — a switch that answers arithmetic questions: a host sends
 * a P4calc header (magic 'P' '4', version, opcode, two operands), the switch
 * computes the result and returns the packet to the port it came from.
 * Covers: lookahead in select on a tuple, serializable enum as a header
 * field type and as a table key, const entries, switch on action_run,
 * arithmetic (+ - * << ), bitwise ops, saturating |+| and |-|, slices,
 * concatenation, log_msg. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

const bit<16> P4CALC_ETYPE = 0x1234;
const bit<8>  P4CALC_P     = 0x50;   // 'P'
const bit<8>  P4CALC_4     = 0x34;   // '4'
const bit<8>  P4CALC_VER   = 0x01;   // v0.1

enum bit<8> CalcOp {
    PLUS      = 0x2b,   // '+'
    MINUS     = 0x2d,   // '-'
    AND       = 0x26,   // '&'
    OR        = 0x7c,   // '|'
    CARET     = 0x5e,   // '^'
    TIMES     = 0x2a,   // '*'
    SHL       = 0x3c,   // '<'
    SAT_PLUS  = 0x70,   // 'p'
    SAT_MINUS = 0x6d,   // 'm'
    CONCAT    = 0x23    // '#': low halves of a and b side by side
}

header p4calc_t {
    bit<8>  p;
    bit<8>  four;
    bit<8>  ver;
    CalcOp  op;
    bit<32> operand_a;
    bit<32> operand_b;
    bit<32> res;
}

struct headers {
    ethernet_t ethernet;
    p4calc_t   p4calc;
}

struct metadata {
    /* empty */
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            P4CALC_ETYPE: check_p4calc;
            default: accept;
        }
    }

    state check_p4calc {
        transition select(packet.lookahead<p4calc_t>().p,
                          packet.lookahead<p4calc_t>().four,
                          packet.lookahead<p4calc_t>().ver) {
            (P4CALC_P, P4CALC_4, P4CALC_VER): parse_p4calc;
            default: accept;
        }
    }

    state parse_p4calc {
        packet.extract(hdr.p4calc);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    action send_back(bit<32> result) {
        bit<48> tmp;
        hdr.p4calc.res = result;
        tmp = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = tmp;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }

    action operation_add()       { send_back(hdr.p4calc.operand_a + hdr.p4calc.operand_b); }
    action operation_sub()       { send_back(hdr.p4calc.operand_a - hdr.p4calc.operand_b); }
    action operation_and()       { send_back(hdr.p4calc.operand_a & hdr.p4calc.operand_b); }
    action operation_or()        { send_back(hdr.p4calc.operand_a | hdr.p4calc.operand_b); }
    action operation_xor()       { send_back(hdr.p4calc.operand_a ^ hdr.p4calc.operand_b); }
    action operation_mul()       { send_back(hdr.p4calc.operand_a * hdr.p4calc.operand_b); }
    action operation_shl()       { send_back(hdr.p4calc.operand_a << hdr.p4calc.operand_b[4:0]); }
    action operation_sat_add()   { send_back(hdr.p4calc.operand_a |+| hdr.p4calc.operand_b); }
    action operation_sat_sub()   { send_back(hdr.p4calc.operand_a |-| hdr.p4calc.operand_b); }
    action operation_concat()    { send_back(hdr.p4calc.operand_a[15:0] ++ hdr.p4calc.operand_b[15:0]); }

    action operation_drop() {
        mark_to_drop(standard_metadata);
    }

    table calculate {
        key = {
            hdr.p4calc.op: exact;
        }
        actions = {
            operation_add;
            operation_sub;
            operation_and;
            operation_or;
            operation_xor;
            operation_mul;
            operation_shl;
            operation_sat_add;
            operation_sat_sub;
            operation_concat;
            operation_drop;
        }
        const default_action = operation_drop();
        const entries = {
            CalcOp.PLUS      : operation_add();
            CalcOp.MINUS     : operation_sub();
            CalcOp.AND       : operation_and();
            CalcOp.OR        : operation_or();
            CalcOp.CARET     : operation_xor();
            CalcOp.TIMES     : operation_mul();
            CalcOp.SHL       : operation_shl();
            CalcOp.SAT_PLUS  : operation_sat_add();
            CalcOp.SAT_MINUS : operation_sat_sub();
            CalcOp.CONCAT    : operation_concat();
        }
    }

    apply {
        if (hdr.p4calc.isValid()) {
            switch (calculate.apply().action_run) {
                operation_drop: {
                    log_msg("p4calc: unknown opcode, operands {} {}",
                            {hdr.p4calc.operand_a, hdr.p4calc.operand_b});
                }
                default: {
                    // Answered: nothing more to do.
                }
            }
        } else {
            operation_drop();
        }
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.p4calc);
    }
}

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
