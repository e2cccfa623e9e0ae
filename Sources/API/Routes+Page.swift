extension ObservableAPI {
    func addPageRoutes(to router: Router) {}
}
