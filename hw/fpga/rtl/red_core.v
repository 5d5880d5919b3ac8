// RED/ECN decision pipeline: the egress RED of p4src/red_ecn.p4 (specified in
// p4src/README.md, "RED as implemented" and "Fixed point and quantisation"),
// bit for bit, for PORTS ports. One packet per clock in; its decision is
// on the outputs after the 7th clock edge from the one that took it (latency
// 7, hw/fpga/README.md "Timing"); no back-pressure.
//
// Stages (a packet spends one clock in each; RAMs read synchronously):
//   s1  inputs registered; cfg and last_departure read; idle bucket
//   sd  decay table read
//   s2  avg read -> idle decay (multiplier 0) -> EWMA -> avg written
//   s3  thresholds: region, avg - threshold, slope to use
//   s4  (avg - threshold) * slope                      (multiplier 1)
//   s5  p_b = offset + product >> 16
//   s6  count/rand read -> R, count*p_b > R -> count/rand written (multiplier 2)
//   s7  outputs
// Per-port state lives in three RAMs (last_departure | avg | count+rand), each
// read one stage before and written at the end of the stage that updates it.
// A packet of the same port one clock ahead writes at the very edge the next
// packet reads, so each update stage forwards that packet's result; any older
// packet has already written. Whether to forward is decided a stage early
// (sN_follows: the packet ahead is valid and of the same port), which keeps
// the port comparison out of the recurrences. Back-to-back packets of one port are therefore
// exact, and the three recurrences close within one clock each.
`include "red_cfg.vh"

module red_core #(
    parameter PORT_BITS = 4,      // width of port numbers
    parameter PORTS = 1 << PORT_BITS,  // ports with state: a power of two <= 2^PORT_BITS;
                                  // port numbers are taken modulo PORTS
    parameter PB_BITS = 64,       // width of p_b and of count * p_b (64 = the P4 program's)
    parameter COUNT_BITS = 32,    // width of count (32 = the P4 program's)
    parameter BUCKET_BITS = 11    // idle bucket (red_idle_decay key: 1024 fine + 1024 coarse)
) (
    input  wire                 clk,
    input  wire                 rst,
    // packet metadata (an egress IPv4 packet)
    input  wire                 in_valid,
    input  wire [PORT_BITS-1:0] in_port,
    input  wire [18:0]          in_qdepth,       // enq_qdepth
    input  wire [31:0]          in_timestamp,    // enq_timestamp, us
    input  wire [31:0]          in_deq_timedelta,// deq_timedelta, us
    input  wire [1:0]           in_ecn,
    // decision
    output reg                  out_valid,
    output reg  [PORT_BITS-1:0] out_port,
    output reg  [1:0]           out_decision,    // 0 pass, 1 CE mark, 2 early drop, 3 forced drop
    output reg  [1:0]           out_ecn,         // ECN field to send
    output reg  [31:0]          out_avg,         // average after this packet, 16 fraction bits
    // random draw: `rand_value` is used when `rand_take` is high
    input  wire [31:0]          rand_value,
    output wire                 rand_take,
    // configuration writes (one port's whole set_red entry at once)
    input  wire                 cfg_we,
    input  wire [PORT_BITS-1:0] cfg_port,
    input  wire [`RED_CFG_BITS-1:0] cfg_data,
    input  wire                 decay_we,
    input  wire [PORT_BITS+BUCKET_BITS-1:0] decay_addr,  // {port, idle bucket}
    input  wire [32:0]          decay_data       // {entry present, factor * 2^32}
);
    localparam [31:0] PORT_MASK = PORTS - 1;
    localparam [1:0] PASS = 2'd0, MARK = 2'd1, EARLY_DROP = 2'd2, FORCED_DROP = 2'd3;

    // ---------------------------------------------------------------- RAMs
    reg [`RED_CFG_BITS-1:0] cfg_mem [0:PORTS-1];
    reg [31:0] dep_mem [0:PORTS-1];
    reg [31:0] avg_mem [0:PORTS-1];
    reg [COUNT_BITS+31:0] cnt_mem [0:PORTS-1];       // {count, rand}
    reg [32:0] decay_mem [0:(PORTS << BUCKET_BITS)-1];

    // All state starts at zero, like the P4 program's registers. In hardware
    // that is the block RAMs' power-up content (INIT defaults to zero on ice40,
    // ECP5 and 7-series); the loop is for simulators only, because Yosys
    // unrolls it per word (minutes for the decay table).
`ifndef SYNTHESIS
    integer i;
    initial begin
        for (i = 0; i < PORTS; i = i + 1) begin
            cfg_mem[i] = 0; dep_mem[i] = 0; avg_mem[i] = 0; cnt_mem[i] = 0;
        end
        for (i = 0; i < (PORTS << BUCKET_BITS); i = i + 1) decay_mem[i] = 0;
    end
`endif

    always @(posedge clk) if (cfg_we) cfg_mem[cfg_port & PORT_MASK] <= cfg_data;
    always @(posedge clk) if (decay_we) decay_mem[decay_addr & ((PORTS << BUCKET_BITS) - 1)] <= decay_data;

    // ------------------------------------------------------------------ s1
    reg s1_valid; reg [PORT_BITS-1:0] s1_port; reg [15:0] s1_q; reg [31:0] s1_now, s1_deq;
    reg [1:0] s1_ecn; reg [`RED_CFG_BITS-1:0] s1_cfg; reg [31:0] s1_dep_ram; reg s1_follows;
    always @(posedge clk) begin
        s1_valid <= in_valid & ~rst;
        s1_follows <= s1_valid & ~rst & (s1_port == (in_port & PORT_MASK));
        s1_port <= in_port & PORT_MASK;
        s1_q <= (in_qdepth > 19'hFFFF) ? 16'hFFFF : in_qdepth[15:0];
        s1_now <= in_timestamp;
        s1_deq <= in_deq_timedelta;
        s1_ecn <= in_ecn;
        s1_cfg <= cfg_mem[in_port & PORT_MASK];
        s1_dep_ram <= dep_mem[in_port & PORT_MASK];
    end

    reg sd_valid; reg [PORT_BITS-1:0] sd_port; reg [15:0] sd_q; reg [1:0] sd_ecn;
    reg [`RED_CFG_BITS-1:0] sd_cfg; reg [31:0] sd_dep; reg sd_idle;
    wire [31:0] s1_departed = s1_follows ? sd_dep : s1_dep_ram;
    wire s1_idle_decays = (s1_q == 16'd0) && (s1_now > s1_departed);
    // red_idle_decay key: idle times below one coarse bucket (2^idle_log us)
    // use 1024 fine buckets 2^(idle_log - 10) us wide; longer ones the coarse
    // bucket 1024 + min(idle >> idle_log, 1023). Shifts of 32 or more give 0,
    // as bit<32> shifts do in P4.
    wire [31:0] s1_idle = s1_now - s1_departed;
    wire [7:0] s1_idle_log = s1_cfg[`CFG_IDLE_LOG];
    wire [31:0] s1_coarse_width = 32'd1 << s1_idle_log;
    wire [7:0] s1_fine_log = (s1_idle_log > 8'd10) ? s1_idle_log - 8'd10 : 8'd0;
    wire [31:0] s1_fine = s1_idle >> s1_fine_log;
    wire [31:0] s1_coarse = s1_idle >> s1_idle_log;
    wire [BUCKET_BITS-1:0] s1_bucket = (s1_idle < s1_coarse_width) ? s1_fine[BUCKET_BITS-1:0]
        : {1'b1, (s1_coarse > 32'd1023) ? 10'd1023 : s1_coarse[9:0]};
    always @(posedge clk) if (s1_valid) dep_mem[s1_port] <= s1_now + s1_deq;

    // ------------------------------------------------------------------ sd
    // The decay factor gets a clock of its own after the table's block RAM, so
    // the RAM's output multiplexer is not in the avg recurrence of s2.
    reg [32:0] sd_decay_ram;
    always @(posedge clk) begin
        sd_valid <= s1_valid & ~rst;
        sd_port <= s1_port;
        sd_q <= s1_q;
        sd_ecn <= s1_ecn;
        sd_cfg <= s1_cfg;
        sd_dep <= s1_now + s1_deq;
        sd_idle <= s1_idle_decays;
        sd_decay_ram <= decay_mem[{s1_port, s1_bucket}];
    end

    // ------------------------------------------------------------------ s2
    reg s2_valid; reg [PORT_BITS-1:0] s2_port; reg [15:0] s2_q; reg [1:0] s2_ecn;
    reg [`RED_CFG_BITS-1:0] s2_cfg; reg s2_idle; reg [32:0] s2_decay; reg [31:0] s2_avg_ram; reg s2_follows;
    always @(posedge clk) begin
        s2_valid <= sd_valid & ~rst;
        s2_follows <= s2_valid & ~rst & (s2_port == sd_port);
        s2_port <= sd_port;
        s2_q <= sd_q;
        s2_ecn <= sd_ecn;
        s2_cfg <= sd_cfg;
        s2_idle <= sd_idle;
        s2_decay <= sd_decay_ram;
        s2_avg_ram <= avg_mem[sd_port];
    end

    reg s3_valid; reg [PORT_BITS-1:0] s3_port; reg [31:0] s3_avg; reg [1:0] s3_ecn;
    reg [`RED_CFG_BITS-1:0] s3_cfg;
    wire [31:0] s2_avg_old = s2_follows ? s3_avg : s2_avg_ram;
    // idle decay: avg * factor >> 32 when the table has an entry for the bucket
    wire [63:0] s2_avg_scaled = s2_avg_old * s2_decay[31:0];
    wire [31:0] s2_avg_decayed = (s2_idle && s2_decay[32]) ? s2_avg_scaled[63:32] : s2_avg_old;
    wire [31:0] s2_q_fixed = {s2_q, 16'd0};
    wire [7:0] s2_wq_log = s2_cfg[`CFG_WQ_LOG];
    wire [31:0] s2_avg_new = (s2_q_fixed >= s2_avg_decayed)
        ? s2_avg_decayed + ((s2_q_fixed - s2_avg_decayed) >> s2_wq_log)
        : s2_avg_decayed - ((s2_avg_decayed - s2_q_fixed) >> s2_wq_log);
    always @(posedge clk) if (s2_valid) avg_mem[s2_port] <= s2_avg_new;

    // ------------------------------------------------------------------ s3
    always @(posedge clk) begin
        s3_valid <= s2_valid & ~rst;
        s3_port <= s2_port;
        s3_avg <= s2_avg_new;
        s3_ecn <= s2_ecn;
        s3_cfg <= s2_cfg;
    end

    wire [31:0] s3_minth = s3_cfg[`CFG_MINTH], s3_maxth = s3_cfg[`CFG_MAXTH];
    wire s3_red = s3_cfg[`CFG_MODE] == 8'd1;
    wire s3_below = s3_avg < s3_minth;
    wire s3_linear = !s3_below && s3_avg < s3_maxth;
    wire s3_gentle = !s3_below && !s3_linear && s3_cfg[`CFG_GENTLE] && (s3_avg - s3_maxth) < s3_maxth;

    reg s4_valid; reg [PORT_BITS-1:0] s4_port; reg [31:0] s4_avg; reg [1:0] s4_ecn;
    reg s4_red, s4_ecn_on, s4_below, s4_region;
    reg [31:0] s4_diff; reg [47:0] s4_slope; reg [31:0] s4_offset;
    always @(posedge clk) begin
        s4_valid <= s3_valid & ~rst;
        s4_port <= s3_port;
        s4_avg <= s3_avg;
        s4_ecn <= s3_ecn;
        s4_red <= s3_red;
        s4_ecn_on <= s3_cfg[`CFG_ECN];
        s4_below <= s3_below;
        s4_region <= s3_linear | s3_gentle;
        s4_diff <= s3_avg - (s3_linear ? s3_minth : s3_maxth);
        s4_slope <= s3_linear ? s3_cfg[`CFG_SLOPE] : s3_cfg[`CFG_GENTLE_SLOPE];
        s4_offset <= s3_linear ? 32'd0 : s3_cfg[`CFG_MAXP];
    end

    // ------------------------------------------------------------------ s4
    reg s5_valid; reg [PORT_BITS-1:0] s5_port; reg [31:0] s5_avg; reg [1:0] s5_ecn;
    reg s5_red, s5_ecn_on, s5_below, s5_region;
    reg [63:0] s5_product; reg [31:0] s5_offset;
    always @(posedge clk) begin
        s5_valid <= s4_valid & ~rst;
        s5_port <= s4_port;
        s5_avg <= s4_avg;
        s5_ecn <= s4_ecn;
        s5_red <= s4_red;
        s5_ecn_on <= s4_ecn_on;
        s5_below <= s4_below;
        s5_region <= s4_region;
        s5_product <= s4_diff * s4_slope;        // modulo 2^64, as bit<64> in P4
        s5_offset <= s4_offset;
    end

    // ------------------------------------------------------------------ s5
    wire [63:0] s5_pb = {32'd0, s5_offset} + (s5_product >> 16);

    reg s6_valid; reg [PORT_BITS-1:0] s6_port; reg [31:0] s6_avg; reg [1:0] s6_ecn;
    reg s6_red, s6_ecn_on, s6_below, s6_region;
    reg [PB_BITS-1:0] s6_pb; reg [COUNT_BITS+31:0] s6_cnt_ram; reg s6_follows;
    always @(posedge clk) begin
        s6_valid <= s5_valid & ~rst;
        s6_follows <= s6_valid & ~rst & (s6_port == s5_port);
        s6_port <= s5_port;
        s6_avg <= s5_avg;
        s6_ecn <= s5_ecn;
        s6_red <= s5_red;
        s6_ecn_on <= s5_ecn_on;
        s6_below <= s5_below;
        s6_region <= s5_region;
        s6_pb <= (PB_BITS < 64 && (s5_pb >> PB_BITS) != 0) ? {PB_BITS{1'b1}} : s5_pb[PB_BITS-1:0];
        s6_cnt_ram <= cnt_mem[s5_port];
    end

    // ------------------------------------------------------------------ s6
    reg [COUNT_BITS+31:0] s7_cnt;
    wire [COUNT_BITS+31:0] s6_cnt_old = s6_follows ? s7_cnt : s6_cnt_ram;
    wire [COUNT_BITS-1:0] s6_count = s6_cnt_old[COUNT_BITS+31:32];
    wire [31:0] s6_rand_old = s6_cnt_old[31:0];
    wire s6_draw = s6_valid && s6_red && s6_region && s6_count == 0;
    wire [31:0] s6_r = s6_draw ? rand_value : s6_rand_old;
    wire [COUNT_BITS-1:0] s6_count_next = s6_count + 1'b1;
    // count * p_b: modulo 2^64 like the P4 program's bit<64>, or exact when narrowed
    localparam REACH_BITS = (PB_BITS >= 64) ? 64 : COUNT_BITS + PB_BITS;
    wire [REACH_BITS-1:0] s6_reach = s6_count_next * s6_pb;
    wire s6_selected = s6_red && s6_region && ({{REACH_BITS{1'b0}}, s6_r} < {32'd0, s6_reach});
    wire s6_forced = s6_red && !s6_below && !s6_region;
    wire [COUNT_BITS-1:0] s6_count_new =
        !s6_red ? s6_count : (s6_region && !s6_selected) ? s6_count_next : {COUNT_BITS{1'b0}};
    wire s6_mark = s6_selected && s6_ecn_on && s6_ecn != 2'b00;
    assign rand_take = s6_draw;

    always @(posedge clk) if (s6_valid) cnt_mem[s6_port] <= {s6_count_new, s6_r};

    always @(posedge clk) begin
        s7_cnt <= {s6_count_new, s6_r};
        out_valid <= s6_valid & ~rst;
        out_port <= s6_port;
        out_avg <= s6_avg;
        out_decision <= s6_forced ? FORCED_DROP : !s6_selected ? PASS : s6_mark ? MARK : EARLY_DROP;
        out_ecn <= s6_mark ? 2'b11 : s6_ecn;
    end
endmodule
