/// Collects a model's members: fields, computed properties and collections.
@resultBuilder
public enum MemberBuilder {
    public static func buildExpression(_ field: Field) -> [Resource.Member] { [.field(field)] }
    public static func buildExpression(_ computed: Computed) -> [Resource.Member] { [.computed(computed)] }
    public static func buildExpression(_ collection: Resource) -> [Resource.Member] { [.collection(collection)] }
    public static func buildBlock(_ members: [Resource.Member]...) -> [Resource.Member] { members.flatMap { $0 } }
}
