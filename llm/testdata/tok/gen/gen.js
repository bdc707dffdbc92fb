// Builds llm/testdata/tok: small byte-level BPE vocabularies and the ids
// the reference implementations give for a corpus of tricky strings.
//
//   node gen.js OUTDIR GPT2_VOCAB_JSON
//
// Needs the npm packages tiktoken (OpenAI's Rust tiktoken compiled to
// WASM; it ships cl100k_base, whose ranks are also Llama 3's first 100256)
// and tokenizers (Hugging Face's Rust tokenizers, Node binding).
// GPT2_VOCAB_JSON holds GPT-2's tokens and merges, read out of llama.cpp's
// models/ggml-vocab-gpt-2.gguf by gguf2json.py.
const fs = require('fs'), zlib = require('zlib'), path = require('path');
const { get_encoding, Tiktoken } = require('tiktoken');
const { Tokenizer } = require('tokenizers');
const [outDir, gpt2Path] = process.argv.slice(2);

const NRANKS = 6000, NMERGES = 6000;
const LLAMA3_PAT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PAT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Llama 3's special tokens as ExecuTorch's runner names them: 256 from
// the number of ranks on.
function llama3Specials() {
  const s = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>', '<|reserved_special_token_1|>',
    '<|finetune_right_pad_id|>', '<|step_id|>', '<|start_header_id|>', '<|end_header_id|>', '<|eom_id|>', '<|eot_id|>', '<|python_tag|>'];
  for (let i = 2; s.length < 256; i++) s.push(`<|reserved_special_token_${i}|>`);
  return s;
}

// GPT-2's byte <-> printable character map.
const bs = []; for (let i = 33; i <= 126; i++) bs.push(i); for (let i = 161; i <= 172; i++) bs.push(i); for (let i = 174; i <= 255; i++) bs.push(i);
const cs = bs.slice(); { let n = 0; for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; } }
const enc = {}; bs.forEach((b, i) => enc[b] = String.fromCodePoint(cs[i]));
const bl = (bytes) => Array.from(bytes, b => enc[b]).join('');

const corpus = [
  '', ' ', '  ', '   ', '\t', '\n', '\n\n', '\n\n\n', '\t\n', '\r\n', '\r\n\r\n', ' \r\n', 'a\r\nb', 'a \r\n b', '\r', 'x\r\r\ny',
  'Hello world', ' Hello world', 'Hello World', ' Hello World!', 'Hello, world!', 'hello world', 'trailing space ', 'trailing spaces   ',
  'two  spaces', 'three   spaces', 'tab\tsep', 'mixed \t \n \t end', '    Hello\n    Hello', '  leading', '\n\nnewlines first',
  'line one\nline two\n', 'a\n\n\n\nb', ' \n', '\n ', 'x \n\n y', 'x  \n  y', 'end\n  ', 'end   \n',
  '1', '12', '123', '1234', '1234567', '3333333', '33333333', '333333333', ' 1234567 ', 'v1.2.3', '3.14159', '2024-01-01', '1,000,000', 'a1b22c333d4444',
  "I'm", "I'M", "you're", "YOU'RE", "'S", "'s 're 've 'll 'd 'm 't", "it's", "IT'S", "don't", "'", "''", "'''s", "'ſ", " 's", "x'LL", "rock'n'roll", "'re're",
  'こんにちは世界', '你好，世界！', '中文 测试 123', '한국어 텍스트', 'Привет мир', 'Ελληνικά', 'العربية', 'עברית', 'हिन्दी भाषा', 'ภาษาไทย',
  'e\u0301', 'cafe\u0301', 'Ame\u0301lie', 'n\u0303o', '\u00e9', 'A\u030a', 'ℌ', 'ﬁ', 'Ⅻ', '①②③', '²³', '٣٤٥', '१२३',
  '🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ (only emoji that has its own token)', '🦙', '👨\u200d👩\u200d👧', '🇺🇸', '😀😀😀', 'a😀b',
  'nbsp\u00a0here', 'ideo\u3000space', 'thin\u2009space', 'vt\u000btab', 'nel\u0085line', 'ls\u2028ps\u2029', '\u00a0\u00a0x', 'x\u3000\u3000',
  'zero\u200bwidth', '\ufeffbom', '!!!', '...', '?!?', ' !!!', '-->', '  -->', '{"a": [1, 2]}', 'foo_bar-baz', '#include <stdio.h>', 'a+b=c', '$100', '@user #tag',
  'def f(x):\n    return x * 2\n', '<html><body>hi</body></html>', '\t\tindented();\n', "what's up?\nnot much.", 'MiXeD CaSe',
  '<|begin_of_text|>', '<|eot_id|>', 'Hello<|eot_id|>world', 'a <|start_header_id|> b', '<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
  '<|eot_id|', '<|reserved_special_token_7|>', '<|endoftext|>', 'x<|endoftext|>y', '<|im_start|>user\nhi<|im_end|>', '<|begin_of_text|><|begin_of_text|>',
  'ied 4 ½ months', 'Führer', '   Hello\n    Hello', ' (', '\n =', "' era", 'Hello, y\'all! How are you 😁 ?我想在apple工作1314151天～',
  '3333333333333333', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '                                                  x',
];

// Random strings from tricky parts (seeded): more runs of mixed spaces,
// contractions, digits and special-token fragments than a hand list has.
{
  const parts = [' ', '  ', '\n', '\r', '\r\n', '\t', '\u00a0', '\u3000', '\u2009', '\u000b', '\u0085', '\u2028', '\u200b', 'a', 'b', 'Z', 'the', 'The', ' the',
    'hello', '\u017f', '\u212a', '\u00e9', 'e\u0301', '\u0301', '\u4e2d', '\u6587', '\u65e5\u672c', '\ud55c', '\u0416', '\u0436', '\u0967', '\u0663', '1', '12', '345', '6789', '0',
    "'", "'s", "'S", "'t", "'re", "'RE", "'ll", "'d", "'m", "'ve", '.', ',', '!', '?', '-', '_', '(', ')', '{', '}', '"', '<', '>', '|', '<|', '|>',
    '<|eot_id|>', '<|begin_of_text|>', '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|start_header_id|>', '\u{1f600}', '\u{1f44d}\u{1f3fd}', '\u200d', '\u{1fae0}',
    '\u210c', '\ufb01', '\u00b2', '\u216b', '\ufeff', 'x', 'y', 'http://', 'a.b', '$', '%', '&', '*', '+', '=', '~', '`', '^', '@', '#', '\\', '/', ';', ':'];
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
  for (let i = 0; i < 300; i++) {
    let s = '';
    for (let n = 1 + Math.floor(rnd() * 12), k = 0; k < n; k++) s += parts[Math.floor(rnd() * parts.length)];
    corpus.push(s);
  }
}

function writeGz(name, data) { fs.writeFileSync(path.join(outDir, name), zlib.gzipSync(Buffer.from(data), { level: 9 })); }

// 1. tiktoken: the first NRANKS ranks of cl100k_base (Llama 3's too).
const cl = get_encoding('cl100k_base');
const rankLines = [], rankBytes = [];
for (let r = 0; r < NRANKS; r++) { const b = Buffer.from(cl.decode_single_token_bytes(r)); rankBytes.push(b); rankLines.push(b.toString('base64') + ' ' + r); }
const tiktokenModel = rankLines.join('\n') + '\n';
writeGz('llama3_6k.tiktoken.gz', tiktokenModel);
const specials = llama3Specials(), specialMap = {};
specials.forEach((s, i) => specialMap[s] = NRANKS + i);
const tt = new Tiktoken(tiktokenModel, specialMap, LLAMA3_PAT);
const expected = { generator: 'llm/testdata/tok/gen/gen.js', tiktoken: [], hf: {} };
for (const text of corpus) {
  expected.tiktoken.push({ text, special: Array.from(tt.encode(text, 'all')), ordinary: Array.from(tt.encode_ordinary(text)) });
}

// 2. Hugging Face tokenizer.json files.
function vocabObj(list) { const v = Object.create(null); list.forEach((t, i) => v[t] = i); return v; }
// Llama 3 style, from the same ranks; merges as Hugging Face's converter
// derives them from ranks (every split of a token into two tokens,
// ordered by the token's rank, then the halves' ranks).
const llamaTokens = rankBytes.map(bl);
const rankOf = Object.create(null); llamaTokens.forEach((t, i) => rankOf[t] = i);
const llamaMerges = [];
llamaTokens.forEach((t, r) => {
  const chars = [...t]; const local = [];
  for (let i = 1; i < chars.length; i++) { const a = chars.slice(0, i).join(''), b = chars.slice(i).join(''); if (a in rankOf && b in rankOf) local.push([a, b]); }
  local.sort((x, y) => rankOf[x[0]] - rankOf[y[0]] || rankOf[x[1]] - rankOf[y[1]]);
  for (const m of local) llamaMerges.push(m.join(' '));
});
const added = (list, base, special) => list.map((c, i) => ({ id: base + i, content: c, single_word: false, lstrip: false, rstrip: false, normalized: false, special }));
const llama3 = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: added(specials, NRANKS, true),
  normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: LLAMA3_PAT }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
  post_processor: { type: 'Sequence', processors: [
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [NRANKS], tokens: ['<|begin_of_text|>'] } } }] },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: true,
    vocab: vocabObj(llamaTokens), merges: llamaMerges },
};
// GPT-2, its first NMERGES merges; and a Qwen 2 style file on the same
// vocabulary (merges as pairs, NFC, Qwen 2's split regex).
const g = JSON.parse(fs.readFileSync(gpt2Path, 'utf8'));
const gTokens = g.tokens.slice(0, 256 + NMERGES), gMerges = g.merges.slice(0, NMERGES);
const gpt2 = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: added(['<|endoftext|>'], gTokens.length, true),
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false,
    vocab: vocabObj(gTokens), merges: gMerges },
};
const qwen2 = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: added(['<|endoftext|>', '<|im_start|>', '<|im_end|>'], gTokens.length, true).concat(added(['<tool_call>', '</tool_call>'], gTokens.length + 3, false)),
  normalizer: { type: 'NFC' },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: QWEN2_PAT }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }] },
  post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab: vocabObj(gTokens), merges: gMerges.map(m => m.split(' ')) },
};
const extraCorpus = ['<tool_call>x</tool_call>', 'a<tool_call>', '<|im_end|>\n<|im_start|>assistant\n'];
(async () => {
  // Two variants not written as files: the Go test makes the same
  // changes to the files above (hfVariant in hftokenizer_test.go).
  const gpt2Prefix = JSON.parse(JSON.stringify(gpt2));
  gpt2Prefix.pre_tokenizer.add_prefix_space = true;
  const qwen2Strip = JSON.parse(JSON.stringify(qwen2));
  qwen2Strip.added_tokens[1].rstrip = true; // <|im_start|>
  qwen2Strip.added_tokens[2].lstrip = true; // <|im_end|>
  for (const [name, obj] of [['llama3_6k', llama3], ['gpt2_6k', gpt2], ['qwen2_6k', qwen2], ['gpt2_6k+add_prefix_space', gpt2Prefix], ['qwen2_6k+strip', qwen2Strip]]) {
    const s = JSON.stringify(obj);
    if (!name.includes('+')) writeGz(name + '.json.gz', s);
    const t = Tokenizer.fromString(s);
    const cases = [];
    for (const text of corpus.concat(extraCorpus)) {
      const withSpecial = Array.from((await t.encode(text, null, { addSpecialTokens: true })).getIds());
      const plain = Array.from((await t.encode(text, null, { addSpecialTokens: false })).getIds());
      const decoded = await t.decode(plain, false);
      const c = { text, add_special: withSpecial, ids: plain };
      if (decoded !== text) c.decoded = decoded; // else the text itself
      cases.push(c);
    }
    expected.hf[name] = cases;
  }
  writeGz('expected.json.gz', JSON.stringify(expected, null, 0).replace(/\},\{/g, '},\n{') + '\n');
  // The tiktoken and Llama 3 style HF files hold the same vocabulary: the
  // two references agree on it.
  let same = 0, diff = 0;
  expected.tiktoken.forEach((c, i) => { const h = expected.hf.llama3_6k[i].ids; if (JSON.stringify(h) === JSON.stringify(c.special)) same++; else { diff++; console.log('tiktoken/HF differ', JSON.stringify(c.text), c.special, h); } });
  console.log('tiktoken vs HF llama3 style: same', same, 'differ', diff, 'corpus', corpus.length);
})();
