# trnsim program (syntax: docs/isa.md)
.chip trn3
.seed 0
.semaphores 2
.tensor x hbm fp32 [128, 64] input at=0x0
.tensor gamma hbm fp32 [64] input at=0x8000
.tensor beta hbm fp32 [64] input at=0x9000
.tensor y hbm fp32 [128, 64] output at=0xa000

.engine dve
  bn_stats sbuf[0:128]+1536 [[1,6]] fp32 <- sbuf[0:128]+512 [[1,64]] fp32 wait=s1>=1
  bn_aggr sbuf[0:128]+1664 [[1,2]] fp32 <- sbuf[0:128]+1536 [[1,6]] fp32
  tensor_scalar sbuf[0:128]+1672 [[1,1]] fp32 <- sbuf[0:128]+1668 [[1,1]] fp32 op0=add arg0=1e-05 op1=pow arg1=-0.5
  tensor_scalar sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128]+512 [[1,64]] fp32, sbuf[0:128]+1664 [[1,1]] fp32, sbuf[0:128]+1672 [[1,1]] fp32 op0=subtract arg0=@2 op1=mult arg1=@3
  tensor_tensor sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128]+1024 [[1,64]] fp32, sbuf[0:128] [[1,64]] fp32 op0=mult
  tensor_tensor sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128]+1024 [[1,64]] fp32, sbuf[0:128]+256 [[1,64]] fp32 op0=add signal=s0+1

.engine pool
  dma_copy y[0:128] [[1,64]] fp32 <- sbuf[0:128]+1024 [[1,64]] fp32 queue=2 wait=s0>=1

.engine sp
  dma_copy sbuf[0:128] [[1,64]] fp32 <- gamma[0:128:0] [[1,64]] fp32
  dma_copy sbuf[0:128]+256 [[1,64]] fp32 <- beta[0:128:0] [[1,64]] fp32
  dma_copy sbuf[0:128]+512 [[1,64]] fp32 <- x[0:128] [[1,64]] fp32 signal=s1+1
