/* aqmlab softswitch-p4c: TNA, written to the public TNA API. As bf-p4c's tna.p4,
 * it declares Tofino 1's or Tofino 2's metadata by __TARGET_TOFINO__ (--arch). */
#ifndef _AQMLAB_TNA_P4_
#define _AQMLAB_TNA_P4_
#include "tofino.p4"
#endif
