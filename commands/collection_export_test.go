package commands

// ParseScanCursorForTest exposes parseCursor to the external tests.
var ParseScanCursorForTest = parseCursor
