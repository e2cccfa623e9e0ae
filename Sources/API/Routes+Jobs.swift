extension ObservableAPI {
    func addJobsRoutes(to router: Router) {}
}
