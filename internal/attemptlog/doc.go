// Package attemptlog is a Go port of the retry storm scanner that comes with the per-attempt
// JSONL format (testdata/retry_storm.py): fed the same lines, its report is byte for byte
// what that script prints, wherever the script prints one.
//
// # Use
//
// Split the input with [SplitLines] (at "\n" only, as CPython reads stdin on POSIX, so line
// numbers agree with the script's), give each line to [ParseLine], give each event to [Scanner.Add],
// then write [Scanner.Report] with [Report.WriteJSON]. ParseLine and Add return errors for
// lines the caller reports and counts; a line with an error takes no part in the report.
// ParseLine takes a line whole: bounding its length is the caller's (stormreport scan
// leaves out a line over --max-message-bytes, which the script would read).
//
// # Where it differs from the script
//
// The script stops with a traceback and prints no report on some inputs. Here such a line
// is left out and named, and the report covers the remaining lines: it is byte for byte
// what the script prints for the input without those lines. Errors for them wrap
// [ErrScriptCrash]:
//
//   - ParseLine: a line that is not valid UTF-8 (the script's stdin decoding fails under a
//     UTF-8 locale; a C locale's surrogateescape reads it instead); a line whose JSON value
//     is not an object (AttributeError on event.get); an integer literal of more than 4300
//     digits (Python's default int string limit, ValueError).
//   - Add, for a complete tool_attempt (incomplete ones are only counted, as the script
//     does): an attempt that Python's int() rejects (a list, object, NaN, infinity, a
//     string that is not an integer); a status or args_hash that is a list or an object
//     (unhashable, TypeError).
//   - Report, in [Report.Dropped]: a t_start or t_end that int() rejects. The script
//     converts only the first attempt's t_start and the last attempt's t_end of a span
//     with at least stormThreshold attempts, so Add accepts such an attempt and Report
//     drops it only when the script would convert that value, repeating until the span
//     converts cleanly or falls below the threshold. [Event.Origin] is how a dropped
//     attempt is named.
//
// Differences on inputs the script does handle:
//
//   - A line nested deeper than 500 arrays and objects is rejected with [ErrTooDeep].
//     CPython 3.11 parses up to about 990 levels there and crashes with RecursionError
//     beyond; the exact depth depends on the Python version.
//   - Which characters Python's repr() prints as they are (str() of a list or object
//     span_id) and which count as decimal digits in int() of a string follow Go's Unicode
//     tables (Unicode 15.0 in Go 1.26); Python 3.11 uses Unicode 14.0. Only code points
//     assigned between the two versions are treated differently.
//   - A storm whose ms has more than 4300 digits (only from t_start and t_end near the
//     integer literal limit) is printed; the script crashes while printing it.
//
// # Memory
//
// The scanner keeps, per complete attempt, 16 bytes (int(attempt), an interned status, an
// index into its span's distinct args_hash values) plus slice growth; per span, its
// str(span_id), the distinct args_hash values, two candidate rows for the first and the
// last attempt (run_id, tool_name and idem_hash as interned JSON text, t_start, t_end),
// about 200 bytes in all. Statuses, run ids, tool names and idempotency hashes are stored
// once per distinct value. Events themselves are not kept.
package attemptlog
