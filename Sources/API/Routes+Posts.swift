extension ObservableAPI {
    func addPostsRoutes(to router: Router) {}
}
