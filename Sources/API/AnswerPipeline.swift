import HTTPServer

/// One stage of the answer pipeline, in the manner of Hummingbird's
/// middleware: on the way in it passes a request on to `next` (the next
/// stage, the route's handler at last) or answers it itself; on the way out
/// it finishes the answer.
///
/// An answer is not always given on the way back: a long-poll is answered
/// when a change wakes it or its deadline passes, a write when it is
/// committed, and the daemon refuses some requests before any route sees
/// them. So what a stage does to answers is `finish`, not code after its
/// call of `next`: the pipeline applies it to every answer exactly once,
/// whoever gives it and whenever, with the `AnswerContext` the request was
/// given (`prepare`), which an answer given later keeps.
protocol AnswerMiddleware: Sendable {
    /// Which of the three the stage takes part in: the pipeline calls it
    /// only for those (the others are the defaults, which do nothing).
    var phases: AnswerPhases { get }

    /// Notes what the stage needs of `request` for the answers to it: for
    /// every request, routed or refused by the daemon, before either.
    func prepare(_ request: HTTPRequest, context: inout AnswerContext)

    /// The way in: passes the request on to `next`, or answers it (returns a
    /// response, or throws what its answer is made of).
    func handle(_ request: HTTPRequest, context: inout RouteContext,
                next: (HTTPRequest, inout RouteContext) throws -> Reply) throws -> Reply

    /// The way out: finishes `answer`, once; the innermost stage first.
    func finish(_ answer: inout Finishing, context: AnswerContext)
}

extension AnswerMiddleware {
    func prepare(_ request: HTTPRequest, context: inout AnswerContext) {}

    func handle(_ request: HTTPRequest, context: inout RouteContext,
                next: (HTTPRequest, inout RouteContext) throws -> Reply) throws -> Reply
    {
        try next(request, &context)
    }

    func finish(_ answer: inout Finishing, context: AnswerContext) {}
}

/// The parts of a request's way through the pipeline a stage takes part in.
struct AnswerPhases: OptionSet, Sendable {
    let rawValue: UInt8
    static let prepare = AnswerPhases(rawValue: 1)
    static let handle = AnswerPhases(rawValue: 2)
    static let finish = AnswerPhases(rawValue: 4)
}

/// An answer being finished: its response, or while `failure` is set, the
/// error it is to be made of (until then `response` is an empty `500`).
struct Finishing {
    var response: HTTPResponse
    var failure: (any Error)?

    init(_ outcome: Result<HTTPResponse, any Error>) {
        switch outcome {
        case .success(let response):
            self.response = response
        case .failure(let error):
            response = HTTPResponse(status: 500)
            failure = error
        }
    }
}

/// What the pipeline's stages know of a request when they finish an answer
/// to it; an answer given later (a parked long-poll, a queued write) keeps
/// it, so that it is finished as one given at once.
struct AnswerContext: Sendable {
    /// Headers every answer to the request carries, given now or later:
    /// those of its allowed origin (`CORS`), and any a handler adds for all
    /// its answers (a long-poll's `Preference-Applied`).
    var headers: [(name: String, value: String)] = []
    /// Where its answer is counted: its route's, `unmatched` or `refused`.
    var counter: Metrics.RouteCounter
    let pipeline: AnswerPipeline

    /// The answer `outcome` makes, finished (see `AnswerPipeline.finish`).
    func finish(_ outcome: Result<HTTPResponse, any Error>) -> HTTPResponse {
        pipeline.finish(outcome, context: self)
    }
}

/// Every answer of the API is finished here, whether given now by a route,
/// later (a woken or expired long-poll, a committed write, a stream's
/// opening) or by the daemon itself (a refusal): the stages are put
/// together once, and each is applied once to each answer.
final class AnswerPipeline: Sendable {
    /// Outermost first: `handle` runs in this order, `finish` in the other.
    let stages: [any AnswerMiddleware]
    /// The stages that take part in each phase, in that order (`finishing`
    /// innermost first): a request pays only for what a stage does.
    private let preparing: [any AnswerMiddleware]
    private let handling: [any AnswerMiddleware]
    private let finishing: [any AnswerMiddleware]
    /// Where the daemon's own refusals are counted.
    let refused: Metrics.RouteCounter

    init(_ stages: [any AnswerMiddleware], metrics: Metrics) {
        self.stages = stages
        preparing = stages.filter { $0.phases.contains(.prepare) }
        handling = stages.filter { $0.phases.contains(.handle) }
        finishing = stages.reversed().filter { $0.phases.contains(.finish) }
        refused = metrics.counter(for: "refused")
    }

    /// The API's stages: every answer counted, with its CORS headers, an
    /// error made problem+json, and the route's tokens checked.
    convenience init(policy: AccessPolicy, metrics: Metrics, extraStages: [any AnswerMiddleware] = []) {
        self.init([RequestMetrics(), CORS(policy: policy), ProblemRendering(), AccessCheck(policy: policy)] + extraStages, metrics: metrics)
    }

    /// The context of a request that has just come in, counted under
    /// `counter` until routing finds its route.
    func context(for request: HTTPRequest, counter: Metrics.RouteCounter) -> AnswerContext {
        var context = AnswerContext(counter: counter, pipeline: self)
        for stage in preparing { stage.prepare(request, context: &context) }
        return context
    }

    /// Takes `request` through the stages to `endpoint`, and finishes the
    /// answer given now; one given later is finished by whoever gives it
    /// (`RouteContext.finish`).
    func respond(_ request: HTTPRequest, context: inout RouteContext, endpoint: (inout RouteContext) throws -> Reply) -> Reply {
        let outcome: Result<HTTPResponse, any Error>
        do {
            switch try handle(request, from: 0, context: &context, endpoint: endpoint) {
            case .response(let response): outcome = .success(response)
            case .parked: return .parked
            }
        } catch {
            outcome = .failure(error)
        }
        return .response(finish(outcome, context: context.answer))
    }

    private func handle(_ request: HTTPRequest, from index: Int, context: inout RouteContext,
                        endpoint: (inout RouteContext) throws -> Reply) throws -> Reply
    {
        guard index < handling.count else { return try endpoint(&context) }
        return try handling[index].handle(request, context: &context) { request, context in
            try handle(request, from: index + 1, context: &context, endpoint: endpoint)
        }
    }

    /// The response `outcome` makes, through every stage's `finish`.
    func finish(_ outcome: Result<HTTPResponse, any Error>, context: AnswerContext) -> HTTPResponse {
        var answer = Finishing(outcome)
        for stage in finishing { stage.finish(&answer, context: context) }
        return answer.response
    }

    /// A refusal of the daemon's, finished as any answer to `request` (nil:
    /// the daemon refused before a request was in) and counted as `refused`.
    func refusal(status: Int, detail: String, request: HTTPRequest?) -> HTTPResponse {
        let context = request.map { self.context(for: $0, counter: refused) } ?? AnswerContext(counter: refused, pipeline: self)
        return finish(.failure(APIError(status, detail)), context: context)
    }
}
