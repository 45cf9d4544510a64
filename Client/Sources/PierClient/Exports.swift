// `import PierClient` is all an app writes: the types the client's calls take and return
// (User, FeedbackItem, Plan, SubscriptionStatus, Problem…) come with it.
@_exported import PierModels
