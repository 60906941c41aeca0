package api

// FeedWriteWait is writeWait, for the feed's tests outside the package: how long the feed
// waits on a client that stopped reading before it closes the connection.
const FeedWriteWait = writeWait
