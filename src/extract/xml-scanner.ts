/**
 * A byte-level scan of XML markup that tracks element nesting and spots entity declarations, so a
 * package part can be judged while it is inflated, before any parser builds a tree from it. Markup
 * characters are ASCII, so UTF-8 input is scanned as bytes. It is not a validator: a malformed
 * part is left for the real parser to reject.
 */
export class XmlScanner {
  private state: number = State.Text;
  private depth = 0;
  private prev = 0;
  /** Characters after `<!` (to tell a comment, CDATA and a declaration apart). */
  private bang = '';
  private quote = 0;
  /** Consecutive `-` (in a comment) or `]` (in CDATA) just seen. */
  private run = 0;
  /** Bracket depth inside a DOCTYPE (its internal subset). */
  private subset = 0;
  /** The last characters of a DOCTYPE, to spot `<!ENTITY`. */
  private tail = '';

  constructor(
    private readonly maxDepth: number,
    private readonly fail: (reason: 'nesting' | 'entity') => Error,
  ) {}

  write(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) this.step(bytes[i]!);
  }

  private step(c: number): void {
    switch (this.state) {
      case State.Text:
        if (c === LT) this.state = State.Open;
        break;
      case State.Open:
        if (c === SLASH) this.state = State.EndTag;
        else if (c === QUESTION) this.state = State.Pi;
        else if (c === BANG) {
          this.state = State.Bang;
          this.bang = '';
        } else {
          this.state = State.StartTag;
          if (++this.depth > this.maxDepth) throw this.fail('nesting');
        }
        break;
      case State.StartTag:
        if (this.quote !== 0) {
          if (c === this.quote) this.quote = 0;
        } else if (c === QUOTE || c === APOS) this.quote = c;
        else if (c === GT) {
          if (this.prev === SLASH) this.depth--;
          this.state = State.Text;
        }
        break;
      case State.EndTag:
        if (c === GT) {
          this.depth--;
          this.state = State.Text;
        }
        break;
      case State.Pi:
        if (c === GT && this.prev === QUESTION) this.state = State.Text;
        break;
      case State.Bang:
        this.bang += String.fromCharCode(c);
        if (this.bang === '--' || this.bang === '[CDATA[') {
          this.state = this.bang === '--' ? State.Comment : State.Cdata;
          this.run = 0;
        } else if (this.bang.length >= 7 && !'[CDATA['.startsWith(this.bang)) {
          this.state = State.Declaration;
          this.subset = 0;
          this.tail = this.bang;
          this.checkEntity();
        } else if (c === GT) this.state = State.Text;
        break;
      case State.Comment:
        if (c === GT && this.run >= 2) this.state = State.Text;
        this.run = c === DASH ? this.run + 1 : 0;
        break;
      case State.Cdata:
        if (c === GT && this.run >= 2) this.state = State.Text;
        this.run = c === RBRACKET ? this.run + 1 : 0;
        break;
      case State.Declaration:
        this.tail = (this.tail + String.fromCharCode(c)).slice(-8);
        this.checkEntity();
        if (c === LBRACKET) this.subset++;
        else if (c === RBRACKET) this.subset--;
        else if (c === GT && this.subset <= 0) this.state = State.Text;
        break;
    }
    this.prev = c;
  }

  private checkEntity(): void {
    if (this.tail.includes('ENTITY')) throw this.fail('entity');
  }
}

const State = {
  Text: 0,
  Open: 1,
  StartTag: 2,
  EndTag: 3,
  Pi: 4,
  Bang: 5,
  Comment: 6,
  Cdata: 7,
  Declaration: 8,
} as const;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const QUESTION = 0x3f;
const BANG = 0x21;
const QUOTE = 0x22;
const APOS = 0x27;
const DASH = 0x2d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
