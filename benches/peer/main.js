// The web peer of benches/peer.py: a VRM in three.js with @pixiv/three-vrm, drawn at 1280x720
// without antialiasing, the whole body in the picture, seven expressions on slow sines, the
// head turning and the spring bones updated every frame. Load it as index.html?model=<url>;
// it reports {event: "ready", renderer, ...} and then every half second {event: "frames",
// frames, t} (t in milliseconds since the epoch) by POST to /report on the serving host.
// With &shot=1 it also posts {event: "shot", png} once, a data URL of the picture.

import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { VRMLoaderPlugin, VRMUtils } from '@pixiv/three-vrm';

const WIDTH = 1280;
const HEIGHT = 720;

function report(body) {
  return fetch('/report', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  }).catch(() => {});
}

window.addEventListener('error', (e) => report({ event: 'error', message: String(e.message) }));
window.addEventListener('unhandledrejection', (e) =>
  report({ event: 'error', message: String(e.reason && (e.reason.stack || e.reason)) }));

const renderer = new THREE.WebGLRenderer({ antialias: false, powerPreference: 'high-performance' });
renderer.setPixelRatio(1);
renderer.setSize(WIDTH, HEIGHT);
renderer.setClearColor(0x00b140);
document.body.appendChild(renderer.domElement);

const gl = renderer.getContext();
const info = gl.getExtension('WEBGL_debug_renderer_info');
const rendererName = info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
const vendorName = info ? gl.getParameter(info.UNMASKED_VENDOR_WEBGL) : gl.getParameter(gl.VENDOR);

const scene = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(27, WIDTH / HEIGHT, 0.05, 100);
const sun = new THREE.DirectionalLight(0xffffff, Math.PI);
sun.position.set(1, 1, 1).normalize();
scene.add(sun);
scene.add(new THREE.AmbientLight(0xffffff, 0.4 * Math.PI));

const url = new URLSearchParams(location.search).get('model');
if (!url) {
  report({ event: 'error', message: 'no ?model= in the URL' });
  throw new Error('no ?model= in the URL');
}

const loader = new GLTFLoader();
loader.register((parser) => new VRMLoaderPlugin(parser));
const gltf = await loader.loadAsync(url);
const vrm = gltf.userData.vrm;
if (!vrm) {
  report({ event: 'error', message: `${url} is not a VRM` });
  throw new Error('not a VRM');
}
VRMUtils.removeUnnecessaryVertices(gltf.scene);
VRMUtils.combineSkeletons(gltf.scene);
VRMUtils.rotateVRM0(vrm);
scene.add(vrm.scene);

// Arms down from the T-pose, as facewire stands a humanoid at rest.
vrm.humanoid.getNormalizedBoneNode('leftUpperArm').rotation.z = 1.2;
vrm.humanoid.getNormalizedBoneNode('rightUpperArm').rotation.z = -1.2;

// Full-body framing: the front face of the bounding box at rest fills the picture's height, so
// the body, further back, fills about 90% of it.
vrm.update(0);
const box = new THREE.Box3().setFromObject(vrm.scene);
const size = box.getSize(new THREE.Vector3());
const centre = box.getCenter(new THREE.Vector3());
const halfFov = THREE.MathUtils.degToRad(camera.fov / 2);
const fitHeight = size.y / 2 / Math.tan(halfFov);
const fitWidth = size.x / 2 / Math.tan(halfFov) / camera.aspect;
camera.position.set(centre.x, centre.y, box.max.z + Math.max(fitHeight, fitWidth));
camera.lookAt(centre);

// VRM 0.x presets a, i, u, e, o, blink and joy, as three-vrm names them.
const expressions = ['aa', 'ih', 'ou', 'ee', 'oh', 'blink', 'happy']
  .filter((name) => vrm.expressionManager && vrm.expressionManager.getExpression(name));
const head = vrm.humanoid.getNormalizedBoneNode('head');
const neck = vrm.humanoid.getNormalizedBoneNode('neck');

let frames = 0;
let shotWanted = false;
const start = performance.now();
let last = start;

function frame(now) {
  requestAnimationFrame(frame);
  const t = (now - start) / 1000;
  const delta = Math.min((now - last) / 1000, 0.1);
  last = now;
  expressions.forEach((name, k) => {
    vrm.expressionManager.setValue(name, 0.5 - 0.5 * Math.cos(t * (1.0 + 0.07 * k) + k));
  });
  head.rotation.set(0.15 * Math.sin(t * 1.3), 0.3 * Math.sin(t * 0.9), 0.1 * Math.sin(t * 0.7));
  if (neck) neck.rotation.y = 0.1 * Math.sin(t * 0.9);
  vrm.update(delta);
  renderer.render(scene, camera);
  frames += 1;
  if (shotWanted) {
    // Read in the same task as the draw, before the drawing buffer is presented and cleared.
    shotWanted = false;
    report({ event: 'shot', png: renderer.domElement.toDataURL('image/png') });
  }
}
requestAnimationFrame(frame);

setInterval(() => report({ event: 'frames', frames, t: Date.now() }), 500);

// With &shot=1, one picture of the stage 1.5 seconds in (within benches/peer.py's warm-up),
// for checking the framing.
if (new URLSearchParams(location.search).get('shot')) {
  setTimeout(() => { shotWanted = true; }, 1500);
}
report({
  event: 'ready',
  renderer: rendererName,
  vendor: vendorName,
  viewport: [window.innerWidth, window.innerHeight],
  canvas: [renderer.domElement.width, renderer.domElement.height],
  expressions,
  springs: vrm.springBoneManager ? vrm.springBoneManager.joints.size : 0,
  height: size.y,
});
