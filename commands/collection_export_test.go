package commands

// ParseScanCursorForTest exposes parseScanCursor to the external tests.
var ParseScanCursorForTest = parseScanCursor
