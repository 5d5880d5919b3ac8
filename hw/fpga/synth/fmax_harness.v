// Place-and-route harness for Fmax only: the block has ~300 I/O bits, more
// than a package has pins, so its inputs come from a shift register fed by one
// pin and its outputs are XOR-folded into one registered pin. Every block
// input is a flip-flop and every output reaches a flip-flop, so the timing
// reported is that of the block's own register-to-register paths.
module fmax_harness #(
    parameter PORT_BITS = 4,
    parameter PORTS = 1 << PORT_BITS,
    parameter PB_BITS = 64
) (
    input  wire clk,
    input  wire si,
    output reg  so
);
    localparam IN_BITS = 1 + PORT_BITS + 19 + 32 + 32 + 2 + 1 + 32 + 8 + 1 + 32 + 4 + 1 + 1 + 8 + 1 + 1 + 1;
    reg [IN_BITS-1:0] sh;
    always @(posedge clk) sh <= {sh[IN_BITS-2:0], si};

    wire out_valid, rand_take, awready, wready, bvalid, arready, rvalid;
    wire [PORT_BITS-1:0] out_port;
    wire [1:0] out_decision, out_ecn, bresp, rresp;
    wire [31:0] out_avg, rdata;
    red_ecn_marker #(.PORT_BITS(PORT_BITS), .PORTS(PORTS), .PB_BITS(PB_BITS)) dut (
        .clk(clk), .rst(sh[0]),
        .in_valid(sh[1]), .in_port(sh[2 +: PORT_BITS]), .in_qdepth(sh[2+PORT_BITS +: 19]),
        .in_timestamp(sh[21+PORT_BITS +: 32]), .in_deq_timedelta(sh[53+PORT_BITS +: 32]),
        .in_ecn(sh[85+PORT_BITS +: 2]),
        .out_valid(out_valid), .out_port(out_port), .out_decision(out_decision),
        .out_ecn(out_ecn), .out_avg(out_avg),
        .rand_ext_en(sh[87+PORT_BITS]), .rand_ext(sh[88+PORT_BITS +: 32]), .rand_take(rand_take),
        .s_axil_awaddr(sh[120+PORT_BITS +: 8]), .s_axil_awvalid(sh[128+PORT_BITS]),
        .s_axil_awready(awready), .s_axil_wdata(sh[129+PORT_BITS +: 32]),
        .s_axil_wstrb(sh[161+PORT_BITS +: 4]), .s_axil_wvalid(sh[165+PORT_BITS]),
        .s_axil_wready(wready), .s_axil_bvalid(bvalid), .s_axil_bresp(bresp),
        .s_axil_bready(sh[166+PORT_BITS]), .s_axil_araddr(sh[167+PORT_BITS +: 8]),
        .s_axil_arvalid(sh[175+PORT_BITS]), .s_axil_arready(arready), .s_axil_rdata(rdata),
        .s_axil_rvalid(rvalid), .s_axil_rresp(rresp), .s_axil_rready(sh[176+PORT_BITS]));
    always @(posedge clk)
        so <= ^{out_valid, out_port, out_decision, out_ecn, out_avg, rand_take, awready, wready,
                bvalid, bresp, arready, rdata, rvalid, rresp};
endmodule
