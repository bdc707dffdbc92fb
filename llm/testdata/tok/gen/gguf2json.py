# Reads GPT-2's vocabulary and merges out of llama.cpp's models/ggml-vocab-gpt-2.gguf
import struct, json, sys
f = open(sys.argv[1], 'rb'); d = f.read(); o = 0
def rd(fmt):
    global o; v = struct.unpack_from('<'+fmt, d, o); o += struct.calcsize('<'+fmt); return v[0]
def rstr():
    global o; n = rd('Q'); s = d[o:o+n].decode('utf-8'); o += n; return s
assert d[:4] == b'GGUF'; o = 4
ver = rd('I'); nt = rd('Q'); nkv = rd('Q')
sizes = {0:'B',1:'b',2:'H',3:'h',4:'I',5:'i',6:'f',7:'?',10:'Q',11:'q',12:'d'}
def rval(t):
    if t == 8: return rstr()
    if t == 9:
        et = rd('I'); n = rd('Q'); return [rval(et) for _ in range(n)]
    return rd(sizes[t])
kv = {}
for _ in range(nkv):
    k = rstr(); t = rd('I'); kv[k] = rval(t)
print({k:(v if not isinstance(v,list) else len(v)) for k,v in kv.items()}, file=sys.stderr)
toks = kv['tokenizer.ggml.tokens']; merges = kv['tokenizer.ggml.merges']
json.dump({'tokens': toks, 'merges': merges, 'types': kv.get('tokenizer.ggml.token_type')}, open(sys.argv[2], 'w'))
