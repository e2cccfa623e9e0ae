-- Each request reads /truck as an observer that has read nothing yet:
-- ids from the file named by OBSERVERS, one per request, in order.
local ids = {}
for line in io.lines(os.getenv("OBSERVERS")) do ids[#ids + 1] = line end
local next = 0
request = function()
    next = next + 1
    return wrk.format("GET", os.getenv("READ_PATH") or "/truck", { ["Observer"] = ids[(next - 1) % #ids + 1] })
end
