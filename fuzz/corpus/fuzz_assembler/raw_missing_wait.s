# Read-after-write across engines: VectorE copies what ScalarE writes, with no wait between
# them. Race: act[0] writes sbuf partitions 0-127 bytes 0-1023, dve[0] reads them.
.chip trn2
.semaphores 1

.engine act
  activation sbuf[0:128] [[1,256]] fp32 <- sbuf[0:128]+4096 [[1,256]] fp32 func=exp

.engine dve
  tensor_copy sbuf[0:128]+8192 [[1,256]] fp32 <- sbuf[0:128] [[1,256]] fp32
