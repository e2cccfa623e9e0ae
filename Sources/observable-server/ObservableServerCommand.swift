import ArgumentParser

struct ObservableServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observable-server",
        abstract: "Observable models as REST resources, with a long-polling change feed of exactly the properties each client read.",
        subcommands: [Serve.self, Migrate.self, HealthCheck.self],
        defaultSubcommand: Serve.self)
}
