-- wrk script for reads.sh: GET /plants/{id} of a random plant among the
-- PLANTS ids reads.sh loaded (1..PLANTS), or with LIST=1 one page of
-- GET /plants?limit=20 after a random id among them. TOKEN sets the bearer
-- token (default bench-token).
local token = os.getenv("TOKEN") or "bench-token"
local plants = tonumber(os.getenv("PLANTS") or "10000")
local list = os.getenv("LIST") == "1"
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  math.randomseed(os.time() * 100 + (tid or 1))
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  local id = math.random(1, plants)
  if list then
    return wrk.format("GET", "/plants?limit=20&after=" .. id)
  end
  return wrk.format("GET", "/plants/" .. id)
end
