enum _PlaceholderHTTP {}
