/* aqmlab softswitch-p4c: the P4-16 core library (declarations written to the
 * public P4-16 language specification's core.p4 API). */
#ifndef _CORE_P4_
#define _CORE_P4_

@noWarn("unused")
action NoAction() {}

error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

extern packet_out {
    void emit<T>(in T hdr);
}

extern void verify(in bool check, in error toSignal);

/// Compile-time checks (core.p4 of P4-16 1.2.3+): a false `check` fails the compilation.
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

match_kind {
    exact,
    ternary,
    lpm
}

#endif
