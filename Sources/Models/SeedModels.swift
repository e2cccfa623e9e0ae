import EmbeddedFiles
import ModelStore

/// The seed systems: every model the server serves by default, with the
/// actions and reads that need code and the work that runs beside them.
public enum SeedModels {
    /// A new catalog of the seed systems (each with its own job runner,
    /// under `jobLimits`), with the migrations of migrations/ as built in
    /// and the rows a new database starts with.
    public static func catalog(jobLimits: Jobs.Limits = Jobs.Limits()) -> Catalog {
        let jobs = Jobs.Runner(limits: jobLimits)
        return Catalog(
            resources: [FoodTruck.donuts, FoodTruck.orders, FoodTruck.truck, Account.account, DotGrid.dots, Jobs.jobs,
                        MemoryGame.games, Posts.posts],
            actions: Account.actions + DotGrid.actions + Jobs.actions(jobs) + MemoryGame.actions,
            reads: DotGrid.reads + Posts.reads,
            background: [jobs],
            migrations: Embedded.migrations.map { ($0.name, $0.text) },
            seed: FoodTruck.seed + DotGrid.seed)
    }
}
