package stormrecord

// Several lines of a summary file can share an id: a trace decided in two parts (a
// collector restart, a decision forgotten by the decision cache) gives a record for each
// part, and a finding found after its trace was forwarded gives a revision of the record
// already written. A reader takes, per id, the most complete of them.

// Completeness orders the records written for one id: more attempts of the call seen
// first (a part of a trace sees only some), then a later revision (the processor revises a
// record it forwarded when a finding about it comes later), then more findings. A finding
// record has no attempts.
type Completeness struct {
	Attempts int
	Revision int
	Findings int
}

// Beats reports whether a record of completeness c is to be read instead of one of old.
// Equal completeness does not beat: the line written first stays, as a re-export of the
// same record is the same record.
func (c Completeness) Beats(old Completeness) bool {
	switch {
	case c.Attempts != old.Attempts:
		return c.Attempts > old.Attempts
	case c.Revision != old.Revision:
		return c.Revision > old.Revision
	}
	return c.Findings > old.Findings
}

// Completeness of a storm record. A revision of 0 (lines written before the field
// existed) counts as 1.
func (r *Record) Completeness() Completeness {
	return Completeness{Attempts: r.Attempts, Revision: max(r.Revision, 1), Findings: len(r.Findings)}
}

// Completeness of a finding record.
func (r *FindingRecord) Completeness() Completeness {
	return Completeness{Revision: max(r.Revision, 1), Findings: len(r.Findings)}
}

// LineCompleteness is the part of any record line Completeness reads, so a reader that
// only orders lines (the exporter preloading its memory) decodes no more.
type LineCompleteness struct {
	ID       string     `json:"id"`
	Attempts int        `json:"attempts"`
	Revision int        `json:"revision"`
	Findings []struct{} `json:"findings"`
}

// Completeness of the line.
func (l *LineCompleteness) Completeness() Completeness {
	return Completeness{Attempts: l.Attempts, Revision: max(l.Revision, 1), Findings: len(l.Findings)}
}
