# A deadlock: VectorE waits for ScalarE's result, and ScalarE for VectorE's.
.chip trn2
.semaphores 2

.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=0 wait=s1>=1 signal=s0+1

.engine act
  activation sbuf[0:128]+256 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 func=exp wait=s0>=1 signal=s1+1
