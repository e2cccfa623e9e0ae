extension ObservableAPI {
    func addMemoryGameRoutes(to router: Router) {}
}
