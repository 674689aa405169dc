"""The HTML report of a study: its sections, the page around them, and its check in a browser."""
