# Number, operand and parameter forms of docs/isa.md not in the other seeds.
.chip trn1
.seed 0x2a
.tensor A hbm fp32 [4, 8, 16] inout at=0x1000
.tensor B hbm cfp8_e5m2_b16 [64] scratch
.engine sync
top: dma_copy sbuf[0:4]-16 [[16,8],[1,16]] fp32 <- A[0:4:128]+-0 [[16,8],[1,16]] queue=0x3 name="a \"b\"\\c\nd" wait=s1>=0 signal=s2-1
  dma_copy hbm[0:1:64]+0x1000 [[1,64]] fp32 <- sbuf[0:1] [] fp32 signal=s0+0x10
  branch target=0 ra=r1 op0=is_lt imm=-2
end:
.engine vector
  memset sbuf[0:32]+64 [[0,4]] bf16 value=nan:0x7fa00001
  tensor_scalar sbuf[0:32] [[1,4]] fp32 <- sbuf[0:32]+64 [[1,4]] bf16 op0=mult arg0=-inf op1=add arg1=1.5e+38
.engine gpsimd
  memset sbuf[0:16] [[1,1]] int8 value=-nan
