-- Each request reads /truck as an observer that has read nothing yet:
-- ids from the file named by OBSERVERS, one per request, in order. The
-- requests are made before the run, so that wrk spends no more per request
-- than on a fixed one (OBSERVER_HEADER names another header: the same
-- requests without an observer).
local path = os.getenv("READ_PATH") or "/truck"
local header = os.getenv("OBSERVER_HEADER") or "Observer"
local requests = {}
for line in io.lines(os.getenv("OBSERVERS")) do
    requests[#requests + 1] = wrk.format("GET", path, { [header] = line })
end
local count = #requests
local next = 0
request = function()
    next = next + 1
    if next > count then next = 1 end
    return requests[next]
end
