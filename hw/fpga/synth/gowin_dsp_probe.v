// Does nextpnr time a path through a Gowin multiplier? A 32 x 32 multiply
// between flip-flops (inputs from a shift register fed by one pin, the
// registered product XOR-folded into one registered pin, as fmax_harness.v).
// run.py builds it twice for the GW2A-18: product in a MULT36X36 (no internal
// registers) and in LUTs (synth_gowin -nodsp). If the multiplier's delay is in
// nextpnr's model, the DSP build's Fmax is bounded by the multiply; if it is
// not, only the XOR fold after the product register is left to time.
module gowin_dsp_probe (
    input  wire clk,
    input  wire si,
    output reg  so
);
    reg [63:0] sh;
    reg [63:0] product;
    always @(posedge clk) begin
        sh <= {sh[62:0], si};
        product <= sh[31:0] * sh[63:32];
        so <= ^product;
    end
endmodule
