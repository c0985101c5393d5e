# Four in-range free sizes (65535 each) overflow int64 in product; validation compares element
# counts before it knows the pattern fits, so the product saturates instead (UBSan found it).
.chip trn2
.semaphores 1
.tensor A hbm bf16 [128, 512] input

.engine sp
  dma_copy sbuf[0:128] [[1,65535],[1,65535],[1,65535],[1,65535]] bf16 <- A[0:128] [[1,65535],[1,65535],[1,65535],[1,65535]] queue=0
