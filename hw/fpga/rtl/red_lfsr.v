// 32-bit Galois LFSR (x^32 + x^22 + x^2 + x + 1, maximal length): the block's
// random source. `value` is the current draw; `advance` steps to the next one.
// A seed write replaces the state (a zero seed is taken as 1: zero is a fixed
// point of the LFSR).
module red_lfsr (
    input  wire        clk,
    input  wire        rst,
    input  wire        seed_valid,
    input  wire [31:0] seed,
    input  wire        advance,
    output reg  [31:0] value
);
    localparam [31:0] TAPS = 32'h8020_0003;
    localparam [31:0] RESET_SEED = 32'h1;

    always @(posedge clk) begin
        if (rst)
            value <= RESET_SEED;
        else if (seed_valid)
            value <= (seed == 32'd0) ? RESET_SEED : seed;
        else if (advance)
            value <= (value >> 1) ^ (value[0] ? TAPS : 32'd0);
    end
endmodule
