import './base.css';
import './compare.css';
