import PierModels

extension Notes {
    /// The notes of the feedback types, by component name.
    static let feedback: [String: SchemaNotes] = [
        "CreateFeedback": SchemaNotes(
            members: [
                "message": ["minLength": 1, "maxLength": 5000],
                "feedback": [
                    "minLength": 1, "maxLength": 5000,
                    "description":
                        "Another name for message (the field of common tutorials' forms): send exactly one of the two.",
                ],
                "name": ["maxLength": 100, "description": "The sender's name; kept for anonymous senders only, like email."],
                "rating": ["minimum": 1, "maximum": 5],
                "category": [
                    "enum": Notes.values(FeedbackCategory.self),
                    "description": "Read case-insensitively (iOS, Bug) and stored lowercase.",
                ],
                "appVersion": ["maxLength": 64],
                "build": ["maxLength": 64],
                "platform": [
                    "enum": Notes.values(Platform.self),
                    "description": "Read case-insensitively (iOS, Bug) and stored lowercase.",
                ],
                "osVersion": ["maxLength": 64],
                "device": ["maxLength": 128],
                "locale": ["maxLength": 35],
                "requestIds": ["items": ["type": "string", "minLength": 1, "maxLength": 128], "maxItems": 20],
                "metadata": ["additionalProperties": ["anyOf": [["type": "string"], ["type": "number"]]]],
            ]),
        "FeedbackItem": SchemaNotes(
            members: [
                "name": ["description": "Admins only: the anonymous sender's name, when given."],
                "replies": [
                    "description":
                        "The team's replies, oldest first (one item, and the sender's own items; not the team's lists)."
                ],
                "statusChanges": ["description": "The sender's view: the item's moves through the workflow, oldest first."],
            ]),
        "UpdateFeedback": SchemaNotes(
            members: [
                "status": ["enum": Notes.values(FeedbackStatus.self)],
                "tags": ["items": ["type": "string", "minLength": 1, "maxLength": 32], "maxItems": 20],
                "internalNote": ["maxLength": 5000],
                "moderation": ["enum": ["approved", "rejected"]],
            ]),
        "FeedbackReply": SchemaNotes(
            members: [
                "authorId": ["description": "Staff only: who wrote it."],
                "delivery": ["enum": ["account", "address", "none"], "description": "Staff only: where it was mailed."],
            ]),
        "CreateFeedbackReply": SchemaNotes(
            members: [
                "id": ["description": "Chosen by the client: a retry with it stores and mails nothing more."],
                "message": ["minLength": 1, "maxLength": 5000],
            ]),
        "FeedbackDailyDay": SchemaNotes(
            members: [
                "day": ["format": "date"]
            ]),
    ]
}
