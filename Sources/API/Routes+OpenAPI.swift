extension ObservableAPI {
    func addOpenAPIRoutes(to router: Router) {}
}
