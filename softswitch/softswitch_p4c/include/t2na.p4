/* aqmlab softswitch-p4c: T2NA (Tofino 2), written to the public T2NA API.
 * The declarations this checker uses are those of tofino.p4 at __TARGET_TOFINO__ 2;
 * T2NA's additions (ghost thread, extra deparser fields) are not declared yet. */
#ifndef _AQMLAB_T2NA_P4_
#define _AQMLAB_T2NA_P4_
#include "tofino.p4"
#endif
