/* aqmlab softswitch-p4c: TNA (Tofino 1), written to the public TNA API. */
#ifndef _AQMLAB_TNA_P4_
#define _AQMLAB_TNA_P4_
#define __TOFINO_PORT_METADATA_BITS__ 32w64
#include "tofino.p4"
#endif
