/// The files built in; the `EmbedFiles` plugin generates their values.
public enum Embedded {}
