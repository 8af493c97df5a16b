--[[
  Saves a transfer's fee estimate (transfer-store.ts saveEstimate) and keeps the batch's fee/net
  totals equal to the sum over its transfers (writeEstimate, in estimate.lua). A run saves its
  estimate this way only when no send's mark carries it (fenced-save.lua): it ends, or waits,
  before it sends.

  Input:
    KEYS[1] the transfer record
    KEYS[2] the batch record
    ARGV[1] fee total (micro-USDC)
    ARGV[2] platform fee (micro-USDC)
    ARGV[3] gas fee (micro-USDC)
    ARGV[4] net receive (micro-USDC)

  Output:
    1
]]
--- @include "estimate"
writeEstimate(KEYS[1], KEYS[2], { total = ARGV[1], platform = ARGV[2], gas = ARGV[3], net = ARGV[4] }, {})
return 1
