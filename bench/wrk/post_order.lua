wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 1}'
