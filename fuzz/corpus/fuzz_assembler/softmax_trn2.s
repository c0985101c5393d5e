# trnsim program (syntax: docs/isa.md)
.chip trn2
.seed 0
.semaphores 3
.tensor x hbm fp32 [128, 64] input at=0x0
.tensor y hbm fp32 [128, 64] output at=0x8000

.engine dve
  tensor_reduce sbuf[0:128]+1024 [[1,1]] fp32 <- sbuf[0:128] [[1,1],[1,64]] fp32 reduce_op=max reduce_axes=1 wait=s2>=1
  tensor_scalar sbuf[0:128]+1028 [[1,1]] fp32 <- sbuf[0:128]+1024 [[1,1]] fp32 op0=mult arg0=-1 signal=s0+1
  reciprocal sbuf[0:128]+1036 [[1,1]] fp32 <- sbuf[0:128]+1032 [[1,1]] fp32 wait=s1>=1
  tensor_scalar sbuf[0:128]+512 [[1,64]] fp32 <- sbuf[0:128]+512 [[1,64]] fp32, sbuf[0:128]+1036 [[1,1]] fp32 op0=mult arg0=@2 signal=s0+1

.engine act
  activation_reduce sbuf[0:128]+512 [[1,64]] fp32, sbuf[0:128]+1032 [[1,1]] fp32 <- sbuf[0:128] [[1,64]] fp32, sbuf[0:128]+1028 [[1,1]] fp32 func=exp bias=@3 wait=s0>=1 signal=s1+1

.engine pool
  dma_copy y[0:128] [[1,64]] fp32 <- sbuf[0:128]+512 [[1,64]] fp32 queue=2 wait=s0>=2

.engine sp
  dma_copy sbuf[0:128] [[1,64]] fp32 <- x[0:128] [[1,64]] fp32 signal=s2+1
