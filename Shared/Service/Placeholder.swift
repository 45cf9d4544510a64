enum _PlaceholderService {}
