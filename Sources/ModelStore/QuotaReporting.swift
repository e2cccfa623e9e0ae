/// What enforces quotas, and reports them.
public protocol QuotaReporting: Sendable {
    var quotaReports: [QuotaReport] { get }
}
