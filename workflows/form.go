package workflows

// HistoryForm names the form of the workflows' histories. It changes with every change to
// workflow code after which a history recorded before would not replay (a command added,
// removed or reordered). Until the first release such changes are made directly, with no
// version marker, and the histories under testdata are recorded again; a store of
// workflows made by another form (the local platform's, kept across starts) cannot run on
// this build, and `slotplane dev` refuses it with a way to start anew. From v0.1.0 on,
// changes ship behind patches and the form changes only in a release that drops an
// upgrade path.
const HistoryForm = "2026-12-06"
