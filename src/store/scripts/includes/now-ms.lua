--[[
  Sets `now`: Redis TIME in ms, one clock for every worker machine (leases, holds, the prepare slot).
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
