import HTTPServer
import Models

extension ObservableAPI {
    func addJobsRoutes(to router: Router) {
        router.get("/jobs") { [self] context in
            try read(context, fields: Job.fields) { state, fields in state.jobs.list(fields) }
        }
        router.post("/jobs") { [self] context in
            let body = try RequestBody(context.request, allowed: ["total", "step", "intervalMs"])
            guard let total = try body.integer("total") else { throw APIError(422, "total is required") }
            let write = try Writes.createJob(total: total, step: try body.integer("step"), intervalMs: try body.integer("intervalMs"))
            return try commit(context, write) { job in Self.written(job.representation().bytes, status: 201, location: job.path) }
        }
        router.get("/jobs/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: Job.fields) { state, fields in
                guard let job = state.jobs[id] else { throw APIError(404, "no job \(id)") }
                return job.representation(fields)
            }
        }
        router.delete("/jobs/:id") { [self] context in
            try commit(context, Writes.deleteJob(context.parameter("id"), ifMatch: context.request.header("If-Match"))) { Self.noContent }
        }
        router.post("/jobs/:id/progress") { [self] context in
            let body = try RequestBody(context.request, allowed: ["current"])
            guard let current = try body.integer("current") else { throw APIError(422, "current is required") }
            return try commit(context, Writes.reportProgress(of: context.parameter("id"), current: current)) { job in
                Self.written(job.representation().bytes)
            }
        }
    }
}
