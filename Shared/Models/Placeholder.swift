enum _PlaceholderModels {}
