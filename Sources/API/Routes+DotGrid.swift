extension ObservableAPI {
    func addDotGridRoutes(to router: Router) {}
}
