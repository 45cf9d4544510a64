enum _PlaceholderPostgres {}
