// RED/ECN marker: red_core (the decision pipeline) + the LFSR random source +
// AXI4-Lite configuration registers. Register map (byte addresses, 32-bit):
//   0x00 R   ID 0x52454431 ("RED1")       0x04 R   PORTS
//   0x08 W   LFSR seed (0 is taken as 1)
//   0x10..0x3C RW staging set_red fields: mode, ecn, gentle, wq_log, minth,
//            maxth, maxp, slope[31:0], slope[47:32], gentle_slope[31:0],
//            gentle_slope[47:32], idle_log
//   0x40 W   COMMIT: write a port number, the staged fields become that
//            port's entry in one clock (atomic, like a P4Runtime MODIFY);
//            an all-zero entry is the P4 table's default (NoAction)
//   0x44 RW  DECAY_INDEX {port, bucket[10:0]} (the 11-bit red_idle_decay key)
//   0x48 W   DECAY_FACTOR: install the red_idle_decay entry of DECAY_INDEX
//            (factor = decay * 2^32, as redctl computes it)
//   0x4C W   DECAY_DELETE: remove that entry (a miss: no decay)
//            both step DECAY_INDEX to the next bucket (burst writes)
// rand_ext_en replaces the LFSR by rand_ext (tests inject their draws).
`include "red_cfg.vh"

module red_ecn_marker #(
    parameter PORT_BITS = 4,
    parameter PORTS = 1 << PORT_BITS,
    parameter PB_BITS = 64,
    parameter COUNT_BITS = 32
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 in_valid,
    input  wire [PORT_BITS-1:0] in_port,
    input  wire [18:0]          in_qdepth,
    input  wire [31:0]          in_timestamp,
    input  wire [31:0]          in_deq_timedelta,
    input  wire [1:0]           in_ecn,
    output wire                 out_valid,
    output wire [PORT_BITS-1:0] out_port,
    output wire [1:0]           out_decision,
    output wire [1:0]           out_ecn,
    output wire [31:0]          out_avg,
    input  wire                 rand_ext_en,
    input  wire [31:0]          rand_ext,
    output wire                 rand_take,
    // AXI4-Lite slave
    input  wire [7:0]           s_axil_awaddr,
    input  wire                 s_axil_awvalid,
    output wire                 s_axil_awready,
    input  wire [31:0]          s_axil_wdata,
    input  wire [3:0]           s_axil_wstrb,
    input  wire                 s_axil_wvalid,
    output wire                 s_axil_wready,
    output reg                  s_axil_bvalid,
    output wire [1:0]           s_axil_bresp,
    input  wire                 s_axil_bready,
    input  wire [7:0]           s_axil_araddr,
    input  wire                 s_axil_arvalid,
    output wire                 s_axil_arready,
    output reg  [31:0]          s_axil_rdata,
    output reg                  s_axil_rvalid,
    output wire [1:0]           s_axil_rresp,
    input  wire                 s_axil_rready
);
    localparam [31:0] ID = 32'h5245_4431;

    // ------------------------------------------------------------ registers
    reg [`RED_CFG_BITS-1:0] staged;
    localparam BUCKET_BITS = 11;
    reg [PORT_BITS+BUCKET_BITS-1:0] decay_index, decay_addr;
    reg cfg_we, decay_we, seed_we;
    reg [PORT_BITS-1:0] cfg_port;
    reg [32:0] decay_data;
    reg [31:0] seed;

    // A write completes when address and data are both present (one clock).
    wire write_fire = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
    assign s_axil_awready = write_fire;
    assign s_axil_wready = write_fire;
    assign s_axil_bresp = 2'b00;

    always @(posedge clk) begin
        cfg_we <= 1'b0;
        decay_we <= 1'b0;
        seed_we <= 1'b0;
        if (rst) begin
            s_axil_bvalid <= 1'b0;
            staged <= 0;
            decay_index <= 0;
        end else begin
            if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
            if (write_fire) begin
                s_axil_bvalid <= 1'b1;
                case (s_axil_awaddr)
                    8'h08: begin seed <= s_axil_wdata; seed_we <= 1'b1; end
                    8'h10: staged[`CFG_MODE] <= s_axil_wdata[7:0];
                    8'h14: staged[`CFG_ECN] <= s_axil_wdata[0];
                    8'h18: staged[`CFG_GENTLE] <= s_axil_wdata[0];
                    8'h1C: staged[`CFG_WQ_LOG] <= s_axil_wdata[7:0];
                    8'h20: staged[`CFG_MINTH] <= s_axil_wdata;
                    8'h24: staged[`CFG_MAXTH] <= s_axil_wdata;
                    8'h28: staged[`CFG_MAXP] <= s_axil_wdata;
                    8'h2C: staged[145:114] <= s_axil_wdata;          // slope[31:0]
                    8'h30: staged[161:146] <= s_axil_wdata[15:0];    // slope[47:32]
                    8'h34: staged[193:162] <= s_axil_wdata;          // gentle_slope[31:0]
                    8'h38: staged[209:194] <= s_axil_wdata[15:0];    // gentle_slope[47:32]
                    8'h3C: staged[`CFG_IDLE_LOG] <= s_axil_wdata[7:0];
                    8'h40: begin cfg_port <= s_axil_wdata[PORT_BITS-1:0]; cfg_we <= 1'b1; end
                    8'h44: decay_index <= s_axil_wdata[PORT_BITS+BUCKET_BITS-1:0];
                    default: ;
                endcase
                // DECAY_INDEX steps to the next bucket after each entry write,
                // so a port's table is written as one burst of DECAY_FACTORs
                if (s_axil_awaddr == 8'h48 || s_axil_awaddr == 8'h4C) begin
                    decay_data <= (s_axil_awaddr == 8'h48) ? {1'b1, s_axil_wdata} : 33'd0;
                    decay_we <= 1'b1;
                    decay_addr <= decay_index;
                    decay_index <= decay_index + 1'b1;
                end
            end
        end
    end

    assign s_axil_arready = !s_axil_rvalid;
    assign s_axil_rresp = 2'b00;
    always @(posedge clk) begin
        if (rst) begin
            s_axil_rvalid <= 1'b0;
        end else if (s_axil_rvalid) begin
            if (s_axil_rready) s_axil_rvalid <= 1'b0;
        end else if (s_axil_arvalid) begin
            s_axil_rvalid <= 1'b1;
            case (s_axil_araddr)
                8'h00: s_axil_rdata <= ID;
                8'h04: s_axil_rdata <= PORTS;
                8'h10: s_axil_rdata <= staged[`CFG_MODE];
                8'h14: s_axil_rdata <= staged[`CFG_ECN];
                8'h18: s_axil_rdata <= staged[`CFG_GENTLE];
                8'h1C: s_axil_rdata <= staged[`CFG_WQ_LOG];
                8'h20: s_axil_rdata <= staged[`CFG_MINTH];
                8'h24: s_axil_rdata <= staged[`CFG_MAXTH];
                8'h28: s_axil_rdata <= staged[`CFG_MAXP];
                8'h2C: s_axil_rdata <= staged[145:114];
                8'h30: s_axil_rdata <= staged[161:146];
                8'h34: s_axil_rdata <= staged[193:162];
                8'h38: s_axil_rdata <= staged[209:194];
                8'h3C: s_axil_rdata <= staged[`CFG_IDLE_LOG];
                8'h44: s_axil_rdata <= decay_index;
                default: s_axil_rdata <= 32'd0;
            endcase
        end
    end

    // ------------------------------------------------------- random source
    wire [31:0] lfsr_value;
    red_lfsr lfsr (
        .clk(clk), .rst(rst), .seed_valid(seed_we), .seed(seed),
        .advance(rand_take && !rand_ext_en), .value(lfsr_value));

    red_core #(.PORT_BITS(PORT_BITS), .PORTS(PORTS), .PB_BITS(PB_BITS), .COUNT_BITS(COUNT_BITS),
               .BUCKET_BITS(BUCKET_BITS)) core (
        .clk(clk), .rst(rst),
        .in_valid(in_valid), .in_port(in_port), .in_qdepth(in_qdepth),
        .in_timestamp(in_timestamp), .in_deq_timedelta(in_deq_timedelta), .in_ecn(in_ecn),
        .out_valid(out_valid), .out_port(out_port), .out_decision(out_decision),
        .out_ecn(out_ecn), .out_avg(out_avg),
        .rand_value(rand_ext_en ? rand_ext : lfsr_value), .rand_take(rand_take),
        .cfg_we(cfg_we), .cfg_port(cfg_port), .cfg_data(staged),
        .decay_we(decay_we), .decay_addr(decay_addr), .decay_data(decay_data));
endmodule
