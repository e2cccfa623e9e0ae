import HTTPServer

// The stages the API's answers go through (`AnswerPipeline(policy:metrics:)`),
// outermost first.

/// Counts every answer once, under its route and status (`/metrics`).
struct RequestMetrics: AnswerMiddleware {
    var phases: AnswerPhases { .finish }

    func finish(_ answer: inout Finishing, context: AnswerContext) {
        context.counter.record(answer.response.status)
    }
}

/// CORS: a request from an allowed origin is told so on every answer,
/// refusals and a stream's opening included; those answers carry the other
/// headers a handler added for all of them as well.
struct CORS: AnswerMiddleware {
    let policy: AccessPolicy
    var phases: AnswerPhases { [.prepare, .finish] }

    func prepare(_ request: HTTPRequest, context: inout AnswerContext) {
        let headers = policy.corsHeaders(for: request)
        guard !headers.isEmpty else { return }
        if context.headers.isEmpty { context.headers = headers } else { context.headers.append(contentsOf: headers) }
    }

    func finish(_ answer: inout Finishing, context: AnswerContext) {
        for header in context.headers { answer.response.setHeader(header.name, header.value) }
    }
}

/// A failure becomes its problem+json answer (`Problem.response(for:)`).
struct ProblemRendering: AnswerMiddleware {
    var phases: AnswerPhases { .finish }

    func finish(_ answer: inout Finishing, context: AnswerContext) {
        guard let failure = answer.failure else { return }
        answer.response = Problem.response(for: failure)
        answer.failure = nil
    }
}

/// Tokens: a route's handler is called only for a request its access
/// allows (`AccessPolicy.deny`); routing sets the access.
struct AccessCheck: AnswerMiddleware {
    let policy: AccessPolicy
    var phases: AnswerPhases { .handle }

    func handle(_ request: HTTPRequest, context: inout RouteContext,
                next: (HTTPRequest, inout RouteContext) throws -> Reply) throws -> Reply
    {
        if let denied = policy.deny(request, access: context.access) { throw denied }
        return try next(request, &context)
    }
}
