-- Renames one donut back and forth, so every request is a real change.
local counter = 0
request = function()
    counter = counter + 1
    local body = '{"name": "Glazed ' .. counter .. '"}'
    return wrk.format("PATCH", "/truck/donuts/0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002", {["Content-Type"] = "application/json"}, body)
end
