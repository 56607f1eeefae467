# Prints src/webcam/model_reference.rs: onnxruntime's outputs of the original networks on the
# test pattern sin(0.05 x + c) cos(0.07 y), at a dozen spread indices and the six largest.
import numpy as np, onnxruntime as ort
side=224
c,y,x=np.meshgrid(np.arange(3),np.arange(side),np.arange(side),indexing='ij')
pat=(np.sin(0.05*x+c)*np.cos(0.07*y)).astype(np.float32)[None]
o=ort.SessionOptions(); o.intra_op_num_threads=1
out=[]
for name,path in [("LANDMARKS","models/openseeface/lm_model0_opt.onnx"),("DETECTOR","models/openseeface/mnv3_detection_opt.onnx")]:
    s=ort.InferenceSession(path,o,providers=["CPUExecutionProvider"])
    r=s.run(None,{"input":pat})[0].reshape(-1)
    idx=list(range(0,r.size,r.size//12))[:12]+list(np.argsort(-np.abs(r))[:6])
    out.append(f"/// {name.lower()} output (flat index, value).\npub const {name}: &[(usize, f32)] = &[\n"+"".join(f"    ({int(i)}, {np.format_float_positional(np.float32(r[i]), unique=True, trim='0')}),\n" for i in idx)+"];\n")
print("// onnxruntime %s's outputs of the original `_opt` files on the test pattern, printed by\n// `python3 src/webcam/model_reference.py > src/webcam/model_reference.rs`.\n" % ort.__version__ + "\n".join(out))
