// A stand-in for the few SwiftUI shapes the README's snippets are shown in (a Button's action, a
// sheet, @State), so that each snippet compiles on Linux in that context: a `catch` inside a
// `Task` in a closure sees `any Error`, not the function's typed error. Not SwiftUI: nothing draws.
@MainActor public protocol View {}

public struct AnyView: View {}

@resultBuilder public enum ViewBuilder {
    public static func buildBlock(_ views: any View...) -> AnyView { AnyView() }
}

@MainActor @propertyWrapper public struct State<Value> {
    final class Box { var value: Value; init(_ value: Value) { self.value = value } }
    let box: Box
    public init(wrappedValue: Value) { box = Box(wrappedValue) }
    public var wrappedValue: Value {
        get { box.value }
        nonmutating set { box.value = newValue }
    }
    public var projectedValue: Binding<Value> { Binding(get: { box.value }, set: { box.value = $0 }) }
}

@MainActor public struct Binding<Value> {
    public let get: () -> Value
    public let set: (Value) -> Void
}

public struct Button: View {
    public init(_ title: String, action: @escaping @MainActor () -> Void) {}
}

public struct Form: View {
    public init(@ViewBuilder content: () -> AnyView) {}
}

public struct TextField: View {
    public init(_ title: String, text: Binding<String>) {}
}

public enum TextContentType { case oneTimeCode, username, password }

extension View {
    public func sheet<Item>(item: Binding<Item?>, @ViewBuilder content: @escaping (Item) -> AnyView) -> AnyView { AnyView() }
    public func textContentType(_ type: TextContentType?) -> AnyView { AnyView() }
}
