/* aqmlab softswitch-p4c: T2NA (Tofino 2), written to the public T2NA API.
 * The declarations this checker uses are those of TNA (tofino.p4); T2NA's
 * additions (ghost thread, extra deparser fields) are not declared yet. */
#ifndef _AQMLAB_T2NA_P4_
#define _AQMLAB_T2NA_P4_
#define __TOFINO_PORT_METADATA_BITS__ 32w192
#include "tofino.p4"
#endif
