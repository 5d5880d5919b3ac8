// Layout of one port's configuration word: the parameters of the P4 action
// MyEgress.set_red (p4src/red_ecn.p4), same names and widths. An all-zero word
// is the table's default (NoAction): drop-tail, wq_log 0 (avg = q).
`ifndef RED_CFG_VH
`define RED_CFG_VH
`define RED_CFG_BITS       218
`define CFG_MODE           7:0
`define CFG_ECN            8
`define CFG_GENTLE         9
`define CFG_WQ_LOG         17:10
`define CFG_MINTH          49:18
`define CFG_MAXTH          81:50
`define CFG_MAXP           113:82
`define CFG_SLOPE          161:114
`define CFG_GENTLE_SLOPE   209:162
`define CFG_IDLE_LOG       217:210
`endif
